//! `xlat schema`: print the JSON Schema of experiment files, for editors that check and
//! complete TOML against one.

use crate::Outcome;
use anyhow::Result;
use clap::Args;

/// Arguments of `xlat schema` (none).
#[derive(Args)]
pub struct SchemaArgs {}

/// Prints the schema, as committed in `docs/experiment.schema.json`.
pub fn run(_: &SchemaArgs) -> Result<Outcome> {
    outln!("{}", serde_json::to_string_pretty(&xlat::config::schema::experiment_schema())?)?;
    Ok(Outcome::Done)
}
