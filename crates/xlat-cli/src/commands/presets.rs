//! `xlat presets`: list the built-in machines or print one as an editable TOML table.

use crate::Outcome;
use anyhow::{anyhow, Result};
use clap::Args;
use xlat::config::presets;
use xlat::config::raw::RawMachine;

/// Arguments of `xlat presets`.
#[derive(Args)]
pub struct PresetsArgs {
    /// Print this preset as a `[[machine]]` table with every level spelled out.
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(presets::NAMES))]
    name: Option<String>,
}

/// Lists presets or prints one.
pub fn run(args: &PresetsArgs) -> Result<Outcome> {
    let Some(name) = &args.name else {
        for name in presets::NAMES {
            outln!("{name}")?;
        }
        return Ok(Outcome::Done);
    };
    let machine = presets::machine(name).map_err(|e| anyhow!(e))?;
    #[derive(serde::Serialize)]
    struct File {
        machine: Vec<RawMachine>,
    }
    out!("{}", toml::to_string(&File { machine: vec![machine] })?)?;
    Ok(Outcome::Done)
}
