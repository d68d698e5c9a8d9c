//! One module per subcommand.

pub mod bench;
pub mod presets;
pub mod run;
pub mod trace;
