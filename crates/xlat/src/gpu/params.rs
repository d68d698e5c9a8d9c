//! The GPU machine's parameters, validated, with GPU Mosaic's Table 1 as defaults. Where the
//! paper gives no figure (cache and DRAM latencies, DRAM bandwidth in bytes per cycle, the
//! cost of a page copy), the value chosen is given with its reason; docs/gpu.md lists them.

use super::caches::CacheSpec;
use super::tlb::LevelShape;
use serde::{Deserialize, Serialize};

/// How a mix's applications share the SMs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SmSplit {
    /// Equal shares, the remainder to the last application (the artifact's split; the
    /// paper says only "equally partitioned").
    RemainderToLast,
    /// Equal shares; SMs left over stay idle.
    Equal,
}

impl SmSplit {
    /// The SMs of each of `apps` applications on a GPU of `sms`; `None` when there are more
    /// applications than SMs.
    pub fn shares(self, sms: usize, apps: usize) -> Option<Vec<usize>> {
        if apps == 0 || apps > sms {
            return None;
        }
        let mut shares = vec![sms / apps; apps];
        if self == SmSplit::RemainderToLast {
            shares[apps - 1] += sms % apps;
        }
        Some(shares)
    }
}

/// The GPU's shape and timing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuParams {
    /// SMs (30).
    pub sms: usize,
    /// Warps resident on an SM at once (48, GPGPU-Sim's Fermi-class configuration).
    pub warps_per_sm: usize,
    /// Core clock in MHz (1020), which turns the far faults' microseconds into cycles.
    pub clock_mhz: f64,
    /// Each SM's L1 TLB (128 base + 16 large entries, fully associative).
    pub l1_tlb: LevelShape,
    /// Cycles of an L1 TLB lookup (1).
    pub l1_tlb_latency: u32,
    /// The shared L2 TLB (512 base entries 16-way + 256 large fully associative).
    pub l2_tlb: LevelShape,
    /// Cycles of an L2 TLB lookup (10).
    pub l2_tlb_latency: u32,
    /// Lookups the L2 TLB starts per cycle (2 ports).
    pub l2_tlb_ports: usize,
    /// Walks in flight at most (64).
    pub max_walks: usize,
    /// Data caches and DRAM.
    pub caches: CacheSpec,
    /// How applications share the SMs.
    pub sm_split: SmSplit,
    /// Load-to-use microseconds of a far fault bringing a 4 KiB page over PCIe (55).
    pub far_fault_base_us: f64,
    /// Load-to-use microseconds of a far fault bringing a 2 MiB page (318).
    pub far_fault_large_us: f64,
    /// PCIe bandwidth in GB/s (12: PCIe 3.0 x16 as measured, the GTX 1080's bus): far
    /// faults' transfers take the bus one after another, each for its bytes' time, and wait
    /// for it, on top of their load-to-use latency.
    pub pcie_gb_per_s: f64,
    /// Nanoseconds compaction spends copying one base page, during which the whole GPU
    /// stalls (the paper's worst-case model). Default 1000: a 4 KiB page read and written
    /// 64 bits at a time over one channel; in-DRAM bulk copy (RowClone, LISA) is 80.
    pub copy_ns_per_page: f64,
}

impl Default for GpuParams {
    fn default() -> GpuParams {
        GpuParams {
            sms: 30,
            warps_per_sm: 48,
            clock_mhz: 1020.0,
            l1_tlb: LevelShape { base_entries: 128, base_ways: 128, large_entries: 16, large_ways: 16 },
            l1_tlb_latency: 1,
            l2_tlb: LevelShape { base_entries: 512, base_ways: 16, large_entries: 256, large_ways: 256 },
            l2_tlb_latency: 10,
            l2_tlb_ports: 2,
            max_walks: 64,
            caches: CacheSpec {
                line: 128,
                l1_bytes: 16 << 10,
                l1_ways: 4,
                l1_latency: 1,
                l1_mshrs: 32,
                l2_bytes: 2 << 20,
                l2_ways: 16,
                // Table 1's 10 cycles. The interconnect's trip both ways is not in it: set
                // this higher to model it (GPGPU-Sim's Fermi configurations take about 100
                // more).
                l2_latency: 10,
                // GDDR5 row access and transfer beyond the L2: about 200 core cycles.
                dram_latency: 200,
                // 6 GDDR5 channels of 32 bits at 1674 MHz, 4 transfers a clock: about
                // 160 GB/s, or 157 bytes per 1020 MHz core cycle.
                dram_bytes_per_cycle: 157.0,
            },
            sm_split: SmSplit::RemainderToLast,
            far_fault_base_us: 55.0,
            far_fault_large_us: 318.0,
            pcie_gb_per_s: 12.0,
            copy_ns_per_page: 1000.0,
        }
    }
}

impl GpuParams {
    /// Cycles of `us` microseconds at the core clock.
    pub fn cycles(&self, us: f64) -> u64 {
        (us * self.clock_mhz).round() as u64
    }

    /// The SMs of each of `apps` applications (see [`SmSplit::shares`]); an error when they
    /// cannot share the GPU's.
    pub fn sm_shares(&self, apps: usize) -> crate::Result<Vec<usize>> {
        self.sm_split
            .shares(self.sms, apps)
            .ok_or_else(|| crate::Error::Simulation(format!("{apps} applications cannot share {} SMs", self.sms)))
    }

    /// Bytes of host memory the TLBs and caches take at most.
    pub fn host_bytes(&self) -> u64 {
        let l1 = self.l1_tlb.host_bytes().saturating_mul(self.sms as u64);
        l1.saturating_add(self.l2_tlb.host_bytes()).saturating_add(self.caches.host_bytes(self.sms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sms_are_shared_equally_with_the_remainder_as_chosen() {
        assert_eq!(SmSplit::RemainderToLast.shares(30, 4), Some(vec![7, 7, 7, 9]));
        assert_eq!(SmSplit::Equal.shares(30, 4), Some(vec![7, 7, 7, 7]));
        assert_eq!(SmSplit::Equal.shares(30, 5), Some(vec![6; 5]));
        assert_eq!(SmSplit::Equal.shares(2, 3), None);
        assert_eq!(SmSplit::Equal.shares(2, 0), None);
    }
}
