//! Simulation: machines of every kind, their statistics, experiment runs and result files.

pub mod experiment;
pub mod machine;
pub mod results;
pub mod stats;

pub use experiment::{process_all, run_experiment, ExperimentResult, Progress, WorkloadResult};
pub use machine::cpu::{CpuMachine, CpuSpec, MosaicSpec};
pub use machine::{Machine, MachineKind, MachineSpec};
pub use results::{check_outputs, results_json, write_results, write_results_csv};
pub use stats::{MachineStats, ResultRow};
