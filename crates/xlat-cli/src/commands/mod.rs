//! One module per subcommand.

pub mod bench;
pub mod hash;
pub mod plot;
pub mod presets;
pub mod run;
pub mod schema;
pub mod trace;
pub mod workload;
