//! Configuration: experiment files (workloads × machines) in TOML, built-in presets, and the
//! validation that turns what users write into the typed specs models are built from.
//!
//! Layers, as in ruff: [`raw`] mirrors the file (serde, unknown fields rejected), [`validate`]
//! checks it once and produces specs, models take only specs.

mod mosaic;
mod os;
pub mod plot;
pub mod presets;
pub mod raw;
pub mod schema;
pub mod size;
pub mod validate;

pub use raw::ExperimentFile;
pub use validate::ExperimentSpec;

use crate::{Error, Result};
use std::path::Path;

/// Field path used for TOML syntax errors, whose message already gives line and column.
const TOML_SYNTAX: &str = "toml";

/// Reads, parses and validates an experiment file; errors name the file and the field.
pub fn load_experiment(path: &Path) -> Result<ExperimentSpec> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let spec = parse_experiment(&text, path.parent().unwrap_or(Path::new(".")));
    spec.map_err(|e| match e {
        Error::Config { path: field, message } if field == TOML_SYNTAX => {
            Error::Config { path: path.display().to_string(), message }
        }
        Error::Config { path: field, message } => {
            Error::Config { path: format!("{}: {field}", path.display()), message }
        }
        other => other,
    })
}

/// Parses and validates experiment TOML text; relative trace paths resolve against `base_dir`.
pub fn parse_experiment(text: &str, base_dir: &Path) -> Result<ExperimentSpec> {
    let file: ExperimentFile = toml::from_str(text).map_err(|e| Error::config(TOML_SYNTAX, e.to_string().trim_end().to_string()))?;
    validate::experiment(&file, base_dir)
}
