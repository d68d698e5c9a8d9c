//! Running a mix of applications on a GPU machine, and its weighted speedup: the sum over
//! the applications of their IPC in the mix over their IPC alone, alone meaning on the same
//! number of SMs under the GPU-MMU baseline (the paper's metric, after Eyerman and Eeckhout).

use super::kernels::{build_all, AppSpec};
use super::machine::{run, AppStats, RunStats};
use super::memory::{self, ManagerKind, ManagerSpec};
use super::params::GpuParams;
use crate::{Error, Result};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

/// A GPU machine's configuration: its hardware, its memory manager, and whether to run each
/// application alone for the weighted speedup.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuSpec {
    /// The machine's name in results.
    pub name: String,
    /// The hardware.
    pub params: GpuParams,
    /// The memory manager.
    pub manager: ManagerSpec,
    /// Runs each application alone under GPU-MMU too, for the weighted speedup (default
    /// on; off halves the time of a run of a mix and leaves the speedup out).
    pub weighted_speedup: bool,
}

/// What one application did in a mix, beside what it did alone.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AppResult {
    /// In the mix.
    #[serde(flatten)]
    pub shared: AppStats,
    /// IPC alone on its SMs under GPU-MMU (`None` without the weighted speedup).
    pub alone_ipc: Option<f64>,
}

/// What a mix did on one GPU machine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MixResult {
    /// The machine's name.
    pub machine: String,
    /// The memory manager's policy.
    pub manager: ManagerKind,
    /// Per application, in mix order.
    pub apps: Vec<AppResult>,
    /// Σ IPC shared / IPC alone (`None` without it).
    pub weighted_speedup: Option<f64>,
    /// The whole run's counts (per application ones are in `apps`).
    pub run: RunStats,
}

/// Checks that `apps` fit the machine: no more applications than SMs, and their footprints
/// together within its memory less what pre-fragmented data takes. Errors name the field.
pub fn check_mix(spec: &GpuSpec, apps: &[AppSpec], field: &str) -> Result<()> {
    if spec.params.sm_split.shares(spec.params.sms, apps.len()).is_none() {
        let message = format!("{} applications cannot share machine `{}`'s {} SMs", apps.len(), spec.name, spec.params.sms);
        return Err(Error::config(field, message));
    }
    let total: u64 = apps.iter().map(AppSpec::footprint).sum();
    let prefragmented = spec.manager.prefragmented_bytes();
    let available = spec.manager.memory_bytes - prefragmented;
    if total > available {
        let message = format!(
            "the applications' footprints add up to {total} bytes, more than machine `{}`'s {available} bytes of GPU memory ({prefragmented} pre-fragmented)",
            spec.name
        );
        return Err(Error::config(field, message));
    }
    Ok(())
}

/// Runs `apps` together on `spec`'s machine and, when it asks, each alone (at the same
/// time, on other threads), taking alone runs that `alone` already holds from it.
pub fn run_mix(spec: &GpuSpec, apps: &[AppSpec], alone: &AloneRuns, interrupt: &AtomicBool) -> Result<MixResult> {
    let shared = || -> Result<RunStats> { run(&spec.params, memory::build(&spec.manager, apps.len()), build_all(apps)?, interrupt) };
    let (shared, alone) = if spec.weighted_speedup {
        let (shared, alone) = rayon::join(shared, || alone.ipcs(spec, apps, interrupt));
        (shared?, alone?)
    } else {
        (shared()?, None)
    };
    let alone = alone.filter(|_| !shared.partial);
    let weighted_speedup = alone.as_ref().map(|alone| shared.apps.iter().zip(alone).map(|(s, a)| if *a > 0.0 { s.ipc / a } else { 0.0 }).sum());
    let results = shared.apps.iter().enumerate().map(|(i, s)| AppResult { shared: s.clone(), alone_ipc: alone.as_ref().map(|a| a[i]) }).collect();
    Ok(MixResult { machine: spec.name.clone(), manager: spec.manager.kind, apps: results, weighted_speedup, run: shared })
}

/// Applications' IPCs alone, by what determines them (the application, the hardware with
/// the application's share of the SMs, and the GPU-MMU manager's configuration): the
/// machines of an experiment that differ only in their policy run each alone run once.
#[derive(Debug, Default)]
pub struct AloneRuns {
    ipcs: Mutex<HashMap<String, f64>>,
}

impl AloneRuns {
    /// Each application's IPC alone on as many SMs as it has in a mix of `apps` on `spec`,
    /// under GPU-MMU with no pre-fragmented data (one baseline for every degree of
    /// fragmentation of a sweep), several at once; `None` when interrupted first.
    fn ipcs(&self, spec: &GpuSpec, apps: &[AppSpec], interrupt: &AtomicBool) -> Result<Option<Vec<f64>>> {
        let shares = spec.params.sm_shares(apps.len())?;
        let manager = ManagerSpec { kind: ManagerKind::GpuMmu, ..spec.manager.unfragmented() };
        let ipcs = apps
            .par_iter()
            .zip(shares)
            .map(|(app, sms)| self.ipc(&GpuParams { sms, ..spec.params.clone() }, &manager, app, interrupt))
            .collect::<Result<Vec<_>>>()?;
        Ok(ipcs.into_iter().collect())
    }

    /// `app`'s IPC alone on `params` under `manager`, run unless known; `None` when
    /// interrupted first (and then not kept).
    fn ipc(&self, params: &GpuParams, manager: &ManagerSpec, app: &AppSpec, interrupt: &AtomicBool) -> Result<Option<f64>> {
        let key = serde_json::to_string(&(params, manager, app)).expect("GPU specs serialize");
        if let Some(&ipc) = self.ipcs.lock().expect("no thread panics holding it").get(&key) {
            return Ok(Some(ipc));
        }
        let alone = run(params, memory::build(manager, 1), vec![app.build()?], interrupt)?;
        if alone.partial {
            return Ok(None);
        }
        let ipc = alone.apps[0].ipc;
        self.ipcs.lock().expect("no thread panics holding it").insert(key, ipc);
        Ok(Some(ipc))
    }
}

/// One row of `gpu.csv`: one application of a mix on one `gpu` machine, with the mix's
/// figures (weighted speedup, TLB hit rates, the manager's counts) repeated on each of its
/// rows so that a plot can take any of them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuRow {
    /// Workload (mix) name.
    pub workload: String,
    /// Machine name.
    pub config: String,
    /// Memory manager policy.
    pub manager: String,
    /// Applications in the mix.
    pub apps: usize,
    /// This application's position in the mix.
    pub app_index: usize,
    /// This application's name.
    pub app: String,
    /// Its SMs.
    pub sms: usize,
    /// Its warp instructions.
    pub instructions: u64,
    /// Its coalesced requests.
    pub requests: u64,
    /// Its cycles.
    pub cycles: u64,
    /// Its IPC in the mix.
    pub ipc: f64,
    /// Its IPC alone under GPU-MMU (empty without it).
    pub alone_ipc: Option<f64>,
    /// `ipc / alone_ipc`.
    pub speedup: Option<f64>,
    /// The mix's weighted speedup.
    pub weighted_speedup: Option<f64>,
    /// The mix's IPC: its applications' IPCs summed, the GPU's throughput (what compares
    /// machines whose alone runs differ, e.g. in their TLB sizes).
    pub total_ipc: f64,
    /// The mix's L1 TLB hit rate (all SMs).
    pub l1_tlb_hit_rate: f64,
    /// The mix's L2 TLB hit rate.
    pub l2_tlb_hit_rate: f64,
    /// The mix's walks.
    pub walks: u64,
    /// Requests merged into walks in flight.
    pub merged: u64,
    /// Base pages and large pages brought by far faults.
    pub far_faults: u64,
    /// Large frames coalesced.
    pub coalesced: u64,
    /// Large pages splintered.
    pub splintered: u64,
    /// Compactions.
    pub compactions: u64,
    /// Pages migrated by compaction.
    pub pages_migrated: u64,
    /// Memory bloat: frames reserved at peak over pages resident at peak, minus 1.
    pub bloat: f64,
    /// True when interrupted.
    pub partial: bool,
}

impl MixResult {
    /// The rows of `gpu.csv` for this mix as workload `workload`.
    pub fn rows(&self, workload: &str) -> Vec<GpuRow> {
        let run = &self.run;
        self.apps
            .iter()
            .enumerate()
            .map(|(i, a)| GpuRow {
                workload: workload.to_string(),
                config: self.machine.clone(),
                manager: serde_json::to_value(self.manager).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
                apps: self.apps.len(),
                app_index: i,
                app: a.shared.name.clone(),
                sms: a.shared.sms,
                instructions: a.shared.instructions,
                requests: a.shared.requests,
                cycles: a.shared.cycles,
                ipc: a.shared.ipc,
                alone_ipc: a.alone_ipc,
                speedup: a.alone_ipc.filter(|&alone| alone > 0.0).map(|alone| a.shared.ipc / alone),
                weighted_speedup: self.weighted_speedup,
                total_ipc: self.apps.iter().map(|a| a.shared.ipc).sum(),
                l1_tlb_hit_rate: run.l1_tlb.hit_rate(),
                l2_tlb_hit_rate: run.l2_tlb.hit_rate(),
                walks: run.walker.walks,
                merged: run.walker.merged,
                far_faults: run.manager.far_faults_base + run.manager.far_faults_large,
                coalesced: run.manager.coalesced,
                splintered: run.manager.splintered,
                compactions: run.manager.compactions,
                pages_migrated: run.manager.pages_migrated,
                bloat: run.manager.bloat(),
                partial: run.partial,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::kernels::{KernelKind, KernelSpec, TINY_BYTES};

    fn spec(kind: ManagerKind) -> GpuSpec {
        let manager = ManagerSpec { kind, ..ManagerSpec::default() };
        GpuSpec { name: kind_name(kind), params: GpuParams { sms: 6, ..GpuParams::default() }, manager, weighted_speedup: true }
    }

    fn kind_name(kind: ManagerKind) -> String {
        serde_json::to_value(kind).expect("serializes").as_str().expect("a string").to_string()
    }

    fn copies(kind: KernelKind, n: usize) -> Vec<AppSpec> {
        vec![AppSpec::Builtin(KernelSpec { kind, bytes: TINY_BYTES, seed: 1 }); n]
    }

    #[test]
    fn identical_copies_with_an_ideal_tlb_speed_up_about_as_many_times_as_there_are_copies() {
        // Each copy runs on a third of the SMs, as it did alone; with no translation cost
        // the copies interfere only through the L2 cache and DRAM.
        let result = run_mix(&spec(ManagerKind::Ideal), &copies(KernelKind::Stencil, 3), &AloneRuns::default(), &AtomicBool::new(false)).expect("runs");
        let ws = result.weighted_speedup.expect("asked for");
        assert!(ws > 2.5 && ws <= 3.3, "weighted speedup {ws}");
    }

    #[test]
    fn an_application_alone_under_gpu_mmu_has_a_weighted_speedup_of_one() {
        let result = run_mix(&spec(ManagerKind::GpuMmu), &copies(KernelKind::Gups, 1), &AloneRuns::default(), &AtomicBool::new(false)).expect("runs");
        assert_eq!(result.weighted_speedup, Some(1.0));
    }

    #[test]
    fn machines_differing_only_in_their_policy_share_their_alone_runs() {
        let alone = AloneRuns::default();
        let apps = [KernelKind::Gups, KernelKind::Stream].map(|kind| AppSpec::Builtin(KernelSpec { kind, bytes: TINY_BYTES, seed: 1 }));
        let first = run_mix(&spec(ManagerKind::GpuMmu), &apps, &alone, &AtomicBool::new(false)).expect("runs");
        let second = run_mix(&spec(ManagerKind::Mosaic), &apps, &alone, &AtomicBool::new(false)).expect("runs");
        assert_eq!(alone.ipcs.lock().unwrap().len(), 2, "one alone run per application");
        let ipcs = |r: &MixResult| r.apps.iter().map(|a| a.alone_ipc).collect::<Vec<_>>();
        assert_eq!(ipcs(&first), ipcs(&second));
        let fresh = run_mix(&spec(ManagerKind::Mosaic), &apps, &AloneRuns::default(), &AtomicBool::new(false)).expect("runs");
        assert_eq!(fresh, second, "the same results as alone runs of its own");
    }

    #[test]
    fn gpu_csv_has_the_columns_plots_may_name() {
        let result = run_mix(&spec(ManagerKind::Mosaic), &copies(KernelKind::Stream, 2), &AloneRuns::default(), &AtomicBool::new(false)).expect("runs");
        let rows = result.rows("w");
        assert_eq!(rows.len(), 2);
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(&rows[0]).expect("serializes");
        let text = String::from_utf8(w.into_inner().expect("flushes")).expect("utf-8");
        assert_eq!(text.lines().next().expect("a header"), crate::config::plot::GPU_COLUMNS.join(","));
    }

    #[test]
    fn a_mix_larger_than_memory_or_than_the_sms_is_refused_naming_the_field() {
        let mut s = spec(ManagerKind::Mosaic);
        s.manager.memory_bytes = 3 * TINY_BYTES;
        let err = check_mix(&s, &copies(KernelKind::Gups, 4), "workload[0].apps").expect_err("too large");
        assert!(err.to_string().contains("workload[0].apps") && err.to_string().contains("GPU memory"), "{err}");
        let err = check_mix(&s, &copies(KernelKind::Gups, 7), "workload[0].apps").expect_err("too many");
        assert!(err.to_string().contains("cannot share"), "{err}");
    }
}
