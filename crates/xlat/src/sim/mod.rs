//! Simulation: machines (TLB hierarchy + OS), their statistics, experiment runs and result
//! files.

pub mod experiment;
pub mod machine;
pub mod results;
pub mod stats;

pub use experiment::{run_experiment, ExperimentResult, Progress, WorkloadResult};
pub use machine::{Machine, MachineSpec, MosaicSpec};
pub use results::{check_outputs, write_results};
pub use stats::{MachineStats, ResultRow};
