//! Configuration: experiment files (workloads × machines) in TOML, built-in presets, and the
//! validation that turns what users write into the typed specs models are built from.
//!
//! Layers, as in ruff: [`raw`] mirrors the file (serde, unknown fields rejected), [`validate`]
//! checks it once and produces specs, models take only specs.

mod mosaic;
pub mod gpu;
pub mod named;
mod os;
mod pwc;
mod timing;
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
    let file: ExperimentFile = toml::from_str(text).map_err(|e| Error::config(TOML_SYNTAX, syntax_message(text, &e)))?;
    validate::experiment(&file, base_dir)
}

/// Parses experiment TOML text and validates only its `[[machine]]` tables (and `seed`):
/// machines fed references from outside an experiment, as the Python package's
/// `Simulation` does. Workloads and plots, if any, are ignored.
pub fn parse_machines(text: &str) -> Result<Vec<crate::sim::MachineSpec>> {
    let file: ExperimentFile = toml::from_str(text).map_err(|e| Error::config(TOML_SYNTAX, syntax_message(text, &e)))?;
    validate::machines(&file)
}

/// Characters of a line that a syntax error quotes on either side of the error.
const QUOTED_CONTEXT: usize = 40;

/// toml's message for `e`, an error in `text`; when the line it quotes is long (a one-line
/// array of a million values), the quote is cut to [`QUOTED_CONTEXT`] characters either
/// side of the error, as the whole line would bury the message.
fn syntax_message(text: &str, e: &toml::de::Error) -> String {
    let full = e.to_string().trim_end().to_string();
    let Some(span) = e.span().filter(|span| span.start <= text.len()) else { return full };
    if full.lines().all(|line| line.chars().count() <= 4 * QUOTED_CONTEXT) {
        return full;
    }
    let line_start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[span.start..].find('\n').map_or(text.len(), |i| span.start + i);
    let before: Vec<char> = text[line_start..span.start].chars().collect();
    let after: Vec<char> = text[span.start..line_end].chars().collect();
    let shown_before = &before[before.len().saturating_sub(QUOTED_CONTEXT)..];
    let shown_after = &after[..after.len().min(QUOTED_CONTEXT)];
    let (lead, trail) = (if shown_before.len() < before.len() { "…" } else { "" }, if shown_after.len() < after.len() { "…" } else { "" });
    let line = text[..span.start].matches('\n').count() + 1;
    let number = line.to_string();
    let pad = " ".repeat(number.len());
    let caret_at = lead.chars().count() + shown_before.len();
    format!(
        "TOML parse error at line {line}, column {}\n{pad} |\n{number} | {lead}{}{}{trail}\n{pad} | {}^\n{}",
        before.len() + 1,
        shown_before.iter().collect::<String>(),
        shown_after.iter().collect::<String>(),
        " ".repeat(caret_at),
        e.message().trim_end(),
    )
}
